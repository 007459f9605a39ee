# final validation loss against peak learning rate; diverged runs as crosses
# written by `gated report`; run `gnuplot bb_search-lr.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'bb_search-lr.svg'
set grid
set key below
set title 'bb_search'
set logscale x
set autoscale xfix
set format x '%g'
set xlabel 'train.lr (log scale)'
set ylabel 'final validation loss, mean +- std over seeds'
set yrange [1.29224411:2.117710898]
set offsets graph 0.05, graph 0.05, 0, 0
set xtics ("0.0003" 0.0003, "0.001" 0.001)
plot 'bb_search-lr.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'd128-T128-B64', \
     'bb_search-lr.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'd64-T64-B32', \
     'bb_search-lr.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'd128-T128-B64-first=non_trigger', \
     'bb_search-lr.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 1 pt 4 title 'd64-T64-B32-first=non_trigger', \
     'bb_search-lr.dat' index 4 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 1 pt 5 title 'd64-T128-B32-first=non_trigger', \
     'bb_search-lr.dat' index 5 using 1:2:3 with yerrorlines lc rgb '#56b4e9' dt 1 pt 6 title 'd128-T64-B32-first=non_trigger'
set terminal pngcairo size 960,560 noenhanced
set output 'bb_search-lr.png'
replot
set output
