# final validation loss against peak learning rate; diverged runs as crosses
# written by `gated report`; run `gnuplot sink_search-lr.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink_search-lr.svg'
set grid
set key below
set title 'sink_search'
set logscale x
set autoscale xfix
set format x '%g'
set xlabel 'train.lr (log scale)'
set ylabel 'final validation loss, mean +- std over seeds'
set yrange [1.649379086:2.01925692]
set offsets graph 0.05, graph 0.05, 0, 0
set xtics ("0.003" 0.003, "0.01" 0.01)
plot 'sink_search-lr.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'base / lr-1e-2', \
     'sink_search-lr.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'random-offsets', \
     'sink_search-lr.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'no-qk-norm', \
     'sink_search-lr.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 1 pt 4 title 'wd-0', \
     'sink_search-lr.dat' index 4 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 1 pt 5 title 'wd-0.5', \
     'sink_search-lr.dat' index 5 using 1:2:3 with yerrorlines lc rgb '#56b4e9' dt 1 pt 6 title 'T-256', \
     'sink_search-lr.dat' index 6 using 1:2:3 with yerrorlines lc rgb '#000000' dt 1 pt 7 title 'depth-8', \
     'sink_search-lr.dat' index 7 using 1:2:3 with yerrorlines lc rgb '#999999' dt 1 pt 8 title 'width-256'
set terminal pngcairo size 960,560 noenhanced
set output 'sink_search-lr.png'
replot
set output
