# M-Act per layer
# written by `gated report`; run `gnuplot sink_search-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink_search-m_act.svg'
set grid
set key below
set title 'sink_search'
set xlabel 'layer'
set xtics 1
set logscale y
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set ytics ("10" 10, "100" 100, "1000" 1000)
set ylabel 'M-Act (max |h| of the layer output, log scale) (bars: +- std)'
plot 'sink_search-m_act.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'base', \
     'sink_search-m_act.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'random-offsets', \
     'sink_search-m_act.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'lr-1e-2', \
     'sink_search-m_act.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 1 pt 4 title 'no-qk-norm', \
     'sink_search-m_act.dat' index 4 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 1 pt 5 title 'wd-0', \
     'sink_search-m_act.dat' index 5 using 1:2:3 with yerrorlines lc rgb '#56b4e9' dt 1 pt 6 title 'wd-0.5', \
     'sink_search-m_act.dat' index 6 using 1:2:3 with yerrorlines lc rgb '#000000' dt 1 pt 7 title 'T-256', \
     'sink_search-m_act.dat' index 7 using 1:2:3 with yerrorlines lc rgb '#999999' dt 1 pt 8 title 'depth-8', \
     'sink_search-m_act.dat' index 8 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 2 pt 9 title 'width-256'
set terminal pngcairo size 960,560 noenhanced
set output 'sink_search-m_act.png'
replot
set output
