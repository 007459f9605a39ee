# validation loss on trigger and on other positions against step, mean +- std over seeds
# written by `gated report`; run `gnuplot bb_remedies-bb-loss.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'bb_remedies-bb-loss.svg'
set grid
set key below
set title 'bb_remedies'
set xlabel 'step'
set ylabel 'validation loss (nats)'
plot 'bb_remedies-bb-loss.dat' index 0 using 1:2 with linespoints lc rgb '#0072b2' dt 1 pt 1 title 'baseline (other positions)', \
     'bb_remedies-bb-loss.dat' index 1 using 1:2 with linespoints lc rgb '#0072b2' dt 2 pt 1 title 'baseline (trigger positions)', \
     'bb_remedies-bb-loss.dat' index 2 using 1:2 with linespoints lc rgb '#d55e00' dt 1 pt 2 title 'G1-elementwise (other positions)', \
     'bb_remedies-bb-loss.dat' index 3 using 1:2 with linespoints lc rgb '#d55e00' dt 2 pt 2 title 'G1-elementwise (trigger positions)', \
     'bb_remedies-bb-loss.dat' index 4 using 1:2 with linespoints lc rgb '#009e73' dt 1 pt 3 title 'softmax1 (other positions)', \
     'bb_remedies-bb-loss.dat' index 5 using 1:2 with linespoints lc rgb '#009e73' dt 2 pt 3 title 'softmax1 (trigger positions)', \
     'bb_remedies-bb-loss.dat' index 6 using 1:2 with linespoints lc rgb '#cc79a7' dt 1 pt 4 title 'sink_logit (other positions)', \
     'bb_remedies-bb-loss.dat' index 7 using 1:2 with linespoints lc rgb '#cc79a7' dt 2 pt 4 title 'sink_logit (trigger positions)', \
     'bb_remedies-bb-loss.dat' index 8 using 1:2 with linespoints lc rgb '#e69f00' dt 1 pt 5 title 'kv_bias (other positions)', \
     'bb_remedies-bb-loss.dat' index 9 using 1:2 with linespoints lc rgb '#e69f00' dt 2 pt 5 title 'kv_bias (trigger positions)', \
     'bb_remedies-bb-loss.dat' index 10 using 1:2 with linespoints lc rgb '#56b4e9' dt 1 pt 6 title 'sigmoid (other positions)', \
     'bb_remedies-bb-loss.dat' index 11 using 1:2 with linespoints lc rgb '#56b4e9' dt 2 pt 6 title 'sigmoid (trigger positions)', \
     'bb_remedies-bb-loss.dat' index 12 using 1:2 with linespoints lc rgb '#000000' dt 1 pt 7 title 'softpick (other positions)', \
     'bb_remedies-bb-loss.dat' index 13 using 1:2 with linespoints lc rgb '#000000' dt 2 pt 7 title 'softpick (trigger positions)', \
     'bb_remedies-bb-loss.dat' index 14 using 1:2 with linespoints lc rgb '#999999' dt 1 pt 8 title 'G1-sink_logit (other positions)', \
     'bb_remedies-bb-loss.dat' index 15 using 1:2 with linespoints lc rgb '#999999' dt 2 pt 8 title 'G1-sink_logit (trigger positions)'
set terminal pngcairo size 960,560 noenhanced
set output 'bb_remedies-bb-loss.png'
replot
set output
