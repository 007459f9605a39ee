# Validation loss against step (mean over seeds)
# written by `gated report`; run `gnuplot activations-val_loss.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'activations-val_loss.svg'
set grid
set key outside right top
set title 'activations'
set xlabel 'step'
set ylabel 'validation loss (nats/token), mean over seeds'
plot 'activations-val_loss.dat' index 0 using 1:2 with linespoints title 'baseline', \
     'activations-val_loss.dat' index 1 using 1:2 with linespoints title 'G1-elementwise', \
     'activations-val_loss.dat' index 2 using 1:2 with linespoints title 'G1-silu', \
     'activations-val_loss.dat' index 3 using 1:2 with linespoints title 'G1-elementwise-tanh', \
     'activations-val_loss.dat' index 4 using 1:2 with linespoints title 'G1-elementwise-identity', \
     'activations-val_loss.dat' index 5 using 1:2 with linespoints title 'G1-headwise', \
     'activations-val_loss.dat' index 6 using 1:2 with linespoints title 'G1-headwise-silu', \
     'activations-val_loss.dat' index 7 using 1:2 with linespoints title 'G1-headwise-tanh', \
     'activations-val_loss.dat' index 8 using 1:2 with linespoints title 'G1-headwise-identity'
set terminal pngcairo size 960,560 noenhanced
set output 'activations-val_loss.png'
replot
set output
