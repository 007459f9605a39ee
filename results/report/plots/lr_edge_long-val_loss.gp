# Validation loss against step
# written by `gated report`; run `gnuplot lr_edge_long-val_loss.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'lr_edge_long-val_loss.svg'
set grid
set key below
set title 'lr_edge_long'
set xlabel 'step'
set ylabel 'validation loss (nats/byte), mean over seeds (band: +- std)'
plot 'lr_edge_long-val_loss.dat' index 0 using 1:($2-$3):($2+$3) with filledcurves fc rgb '#0072b2' fs transparent solid 0.15 noborder notitle, \
     'lr_edge_long-val_loss.dat' index 1 using 1:($2-$3):($2+$3) with filledcurves fc rgb '#d55e00' fs transparent solid 0.15 noborder notitle, \
     'lr_edge_long-val_loss.dat' index 0 using 1:2 with linespoints lc rgb '#0072b2' dt 1 pt 1 title 'baseline-lr5.0e-1', \
     'lr_edge_long-val_loss.dat' index 1 using 1:2 with linespoints lc rgb '#d55e00' dt 1 pt 2 title 'G1-matched-lr5.0e-1'
set terminal pngcairo size 960,560 noenhanced
set output 'lr_edge_long-val_loss.png'
replot
set output
