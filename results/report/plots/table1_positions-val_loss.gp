# Validation loss against step (mean over seeds)
# written by `gated report`; run `gnuplot table1_positions-val_loss.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'table1_positions-val_loss.svg'
set grid
set key outside right top
set title 'table1_positions'
set xlabel 'step'
set ylabel 'validation loss (nats/token), mean over seeds'
plot 'table1_positions-val_loss.dat' index 0 using 1:2 with linespoints title 'baseline', \
     'table1_positions-val_loss.dat' index 1 using 1:2 with linespoints title 'more-kv-heads', \
     'table1_positions-val_loss.dat' index 2 using 1:2 with linespoints title 'more-q-heads', \
     'table1_positions-val_loss.dat' index 3 using 1:2 with linespoints title 'G1-elementwise', \
     'table1_positions-val_loss.dat' index 4 using 1:2 with linespoints title 'G2-elementwise', \
     'table1_positions-val_loss.dat' index 5 using 1:2 with linespoints title 'G3-elementwise', \
     'table1_positions-val_loss.dat' index 6 using 1:2 with linespoints title 'G4-elementwise', \
     'table1_positions-val_loss.dat' index 7 using 1:2 with linespoints title 'G5', \
     'table1_positions-val_loss.dat' index 8 using 1:2 with linespoints title 'G1-headwise', \
     'table1_positions-val_loss.dat' index 9 using 1:2 with linespoints title 'G2-headwise', \
     'table1_positions-val_loss.dat' index 10 using 1:2 with linespoints title 'G1-head-shared', \
     'table1_positions-val_loss.dat' index 11 using 1:2 with linespoints title 'G2-head-shared', \
     'table1_positions-val_loss.dat' index 12 using 1:2 with linespoints title 'G1-additive-silu', \
     'table1_positions-val_loss.dat' index 13 using 1:2 with linespoints title 'G1-silu'
set terminal pngcairo size 960,560 noenhanced
set output 'table1_positions-val_loss.png'
replot
set output
