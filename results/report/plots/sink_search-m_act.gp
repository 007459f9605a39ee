# M-Act per layer (last step, mean over seeds; log scale)
# written by `gated report`; run `gnuplot sink_search-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink_search-m_act.svg'
set grid
set key outside right top
set title 'sink_search'
set xlabel 'layer'
set xtics 1
set logscale y
set ylabel 'M-Act (max |h| of the layer output, log scale)'
plot 'sink_search-m_act.dat' index 0 using 1:2 with linespoints title 'base', \
     'sink_search-m_act.dat' index 1 using 1:2 with linespoints title 'random-offsets', \
     'sink_search-m_act.dat' index 2 using 1:2 with linespoints title 'lr-1e-2', \
     'sink_search-m_act.dat' index 3 using 1:2 with linespoints title 'no-qk-norm', \
     'sink_search-m_act.dat' index 4 using 1:2 with linespoints title 'wd-0', \
     'sink_search-m_act.dat' index 5 using 1:2 with linespoints title 'wd-0.5', \
     'sink_search-m_act.dat' index 6 using 1:2 with linespoints title 'T-256', \
     'sink_search-m_act.dat' index 7 using 1:2 with linespoints title 'depth-8', \
     'sink_search-m_act.dat' index 8 using 1:2 with linespoints title 'width-256'
set terminal pngcairo size 960,560 noenhanced
set output 'sink_search-m_act.png'
replot
set output
