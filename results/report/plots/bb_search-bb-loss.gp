# validation loss on trigger and on other positions against step, mean +- std over seeds
# written by `gated report`; run `gnuplot bb_search-bb-loss.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'bb_search-bb-loss.svg'
set grid
set key below
set title 'bb_search'
set xlabel 'step'
set ylabel 'validation loss (nats)'
plot 'bb_search-bb-loss.dat' index 0 using 1:2 with linespoints lc rgb '#0072b2' dt 1 pt 1 title 'd128-T128-B64-lr1e-3 (other positions)', \
     'bb_search-bb-loss.dat' index 1 using 1:2 with linespoints lc rgb '#0072b2' dt 2 pt 1 title 'd128-T128-B64-lr1e-3 (trigger positions)', \
     'bb_search-bb-loss.dat' index 2 using 1:2 with linespoints lc rgb '#d55e00' dt 1 pt 2 title 'd64-T64-B32-lr1e-3 (other positions)', \
     'bb_search-bb-loss.dat' index 3 using 1:2 with linespoints lc rgb '#d55e00' dt 2 pt 2 title 'd64-T64-B32-lr1e-3 (trigger positions)', \
     'bb_search-bb-loss.dat' index 4 using 1:2 with linespoints lc rgb '#009e73' dt 1 pt 3 title 'd128-T128-B64-lr1e-3-first=non_trigger (other positions)', \
     'bb_search-bb-loss.dat' index 5 using 1:2 with linespoints lc rgb '#009e73' dt 2 pt 3 title 'd128-T128-B64-lr1e-3-first=non_trigger (trigger positions)', \
     'bb_search-bb-loss.dat' index 6 using 1:2 with linespoints lc rgb '#cc79a7' dt 1 pt 4 title 'd64-T64-B32-lr1e-3-first=non_trigger (other positions)', \
     'bb_search-bb-loss.dat' index 7 using 1:2 with linespoints lc rgb '#cc79a7' dt 2 pt 4 title 'd64-T64-B32-lr1e-3-first=non_trigger (trigger positions)', \
     'bb_search-bb-loss.dat' index 8 using 1:2 with linespoints lc rgb '#e69f00' dt 1 pt 5 title 'd64-T128-B32-lr1e-3-first=non_trigger (other positions)', \
     'bb_search-bb-loss.dat' index 9 using 1:2 with linespoints lc rgb '#e69f00' dt 2 pt 5 title 'd64-T128-B32-lr1e-3-first=non_trigger (trigger positions)', \
     'bb_search-bb-loss.dat' index 10 using 1:2 with linespoints lc rgb '#56b4e9' dt 1 pt 6 title 'd128-T64-B32-lr3e-4-first=non_trigger (other positions)', \
     'bb_search-bb-loss.dat' index 11 using 1:2 with linespoints lc rgb '#56b4e9' dt 2 pt 6 title 'd128-T64-B32-lr3e-4-first=non_trigger (trigger positions)'
set terminal pngcairo size 960,560 noenhanced
set output 'bb_search-bb-loss.png'
replot
set output
