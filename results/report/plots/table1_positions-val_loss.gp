# Validation loss against step
# written by `gated report`; run `gnuplot table1_positions-val_loss.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'table1_positions-val_loss.svg'
set grid
set key below
set title 'table1_positions'
set xlabel 'step'
set ylabel 'validation loss (nats/byte), mean over seeds'
plot 'table1_positions-val_loss.dat' index 0 using 1:2 with linespoints lc rgb '#0072b2' dt 1 pt 1 title 'baseline', \
     'table1_positions-val_loss.dat' index 1 using 1:2 with linespoints lc rgb '#d55e00' dt 1 pt 2 title 'more-kv-heads', \
     'table1_positions-val_loss.dat' index 2 using 1:2 with linespoints lc rgb '#009e73' dt 1 pt 3 title 'more-q-heads', \
     'table1_positions-val_loss.dat' index 3 using 1:2 with linespoints lc rgb '#cc79a7' dt 1 pt 4 title 'G1-elementwise', \
     'table1_positions-val_loss.dat' index 4 using 1:2 with linespoints lc rgb '#e69f00' dt 1 pt 5 title 'G2-elementwise', \
     'table1_positions-val_loss.dat' index 5 using 1:2 with linespoints lc rgb '#56b4e9' dt 1 pt 6 title 'G3-elementwise', \
     'table1_positions-val_loss.dat' index 6 using 1:2 with linespoints lc rgb '#000000' dt 1 pt 7 title 'G4-elementwise', \
     'table1_positions-val_loss.dat' index 7 using 1:2 with linespoints lc rgb '#999999' dt 1 pt 8 title 'G5', \
     'table1_positions-val_loss.dat' index 8 using 1:2 with linespoints lc rgb '#0072b2' dt 2 pt 9 title 'G1-headwise', \
     'table1_positions-val_loss.dat' index 9 using 1:2 with linespoints lc rgb '#d55e00' dt 2 pt 10 title 'G2-headwise', \
     'table1_positions-val_loss.dat' index 10 using 1:2 with linespoints lc rgb '#009e73' dt 2 pt 11 title 'G1-head-shared', \
     'table1_positions-val_loss.dat' index 11 using 1:2 with linespoints lc rgb '#cc79a7' dt 2 pt 12 title 'G2-head-shared', \
     'table1_positions-val_loss.dat' index 12 using 1:2 with linespoints lc rgb '#e69f00' dt 2 pt 13 title 'G1-additive-silu', \
     'table1_positions-val_loss.dat' index 13 using 1:2 with linespoints lc rgb '#56b4e9' dt 2 pt 1 title 'G1-silu'
set terminal pngcairo size 960,560 noenhanced
set output 'table1_positions-val_loss.png'
replot
set output
