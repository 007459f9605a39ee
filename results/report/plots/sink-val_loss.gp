# Validation loss against step (mean over seeds)
# written by `gated report`; run `gnuplot sink-val_loss.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink-val_loss.svg'
set grid
set key outside right top
set title 'sink'
set xlabel 'step'
set ylabel 'validation loss (nats/token), mean over seeds'
plot 'sink-val_loss.dat' index 0 using 1:2 with linespoints title 'baseline', \
     'sink-val_loss.dat' index 1 using 1:2 with linespoints title 'G1-elementwise', \
     'sink-val_loss.dat' index 2 using 1:2 with linespoints title 'G1-headwise', \
     'sink-val_loss.dat' index 3 using 1:2 with linespoints title 'G1-head-shared', \
     'sink-val_loss.dat' index 4 using 1:2 with linespoints title 'G1-input-independent', \
     'sink-val_loss.dat' index 5 using 1:2 with linespoints title 'G1-ns-sigmoid', \
     'sink-val_loss.dat' index 6 using 1:2 with linespoints title 'G2-elementwise'
set terminal pngcairo size 960,560 noenhanced
set output 'sink-val_loss.png'
replot
set output
