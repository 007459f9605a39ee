# Validation loss against step
# written by `gated report`; run `gnuplot sink_search_long-val_loss.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink_search_long-val_loss.svg'
set grid
set key below
set title 'sink_search_long'
set xlabel 'step'
set ylabel 'validation loss (nats/byte), mean over seeds'
plot 'sink_search_long-val_loss.dat' index 0 using 1:2 with linespoints lc rgb '#0072b2' dt 1 pt 1 title 'base-6M', \
     'sink_search_long-val_loss.dat' index 1 using 1:2 with linespoints lc rgb '#d55e00' dt 1 pt 2 title 'lr-1e-2-6M'
set terminal pngcairo size 960,560 noenhanced
set output 'sink_search_long-val_loss.png'
replot
set output
