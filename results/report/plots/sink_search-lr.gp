# final validation loss against peak learning rate; diverged runs as crosses
# written by `gated report`; run `gnuplot sink_search-lr.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink_search-lr.svg'
set grid
set key outside right top
set title 'sink_search'
set logscale x
set format x '%g'
set xlabel 'train.lr (log scale)'
set ylabel 'final validation loss, mean +- std over seeds'
set yrange [1.649379086:2.01925692]
set offsets graph 0.05, graph 0.05, 0, 0
plot 'sink_search-lr.dat' index 0 using 1:2:3 with yerrorlines title 'base / lr-1e-2', \
     'sink_search-lr.dat' index 1 using 1:2:3 with yerrorlines title 'random-offsets', \
     'sink_search-lr.dat' index 2 using 1:2:3 with yerrorlines title 'no-qk-norm', \
     'sink_search-lr.dat' index 3 using 1:2:3 with yerrorlines title 'wd-0', \
     'sink_search-lr.dat' index 4 using 1:2:3 with yerrorlines title 'wd-0.5', \
     'sink_search-lr.dat' index 5 using 1:2:3 with yerrorlines title 'T-256', \
     'sink_search-lr.dat' index 6 using 1:2:3 with yerrorlines title 'depth-8', \
     'sink_search-lr.dat' index 7 using 1:2:3 with yerrorlines title 'width-256'
set terminal pngcairo size 960,560 noenhanced
set output 'sink_search-lr.png'
replot
set output
