# Validation loss against step (mean over seeds)
# written by `gated report`; run `gnuplot lr_stability-val_loss.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'lr_stability-val_loss.svg'
set grid
set key outside right top
set title 'lr_stability'
set xlabel 'step'
set ylabel 'validation loss (nats/token), mean over seeds'
plot 'lr_stability-val_loss.dat' index 0 using 1:2 with linespoints title 'baseline-lr3.0e-3', \
     'lr_stability-val_loss.dat' index 1 using 1:2 with linespoints title 'G1-matched-lr3.0e-3', \
     'lr_stability-val_loss.dat' index 2 using 1:2 with linespoints title 'baseline-lr1.0e-2', \
     'lr_stability-val_loss.dat' index 3 using 1:2 with linespoints title 'G1-matched-lr1.0e-2', \
     'lr_stability-val_loss.dat' index 4 using 1:2 with linespoints title 'baseline-lr3.0e-2', \
     'lr_stability-val_loss.dat' index 5 using 1:2 with linespoints title 'G1-matched-lr3.0e-2'
set terminal pngcairo size 960,560 noenhanced
set output 'lr_stability-val_loss.png'
replot
set output
