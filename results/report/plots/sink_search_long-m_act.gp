# M-Act per layer
# written by `gated report`; run `gnuplot sink_search_long-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink_search_long-m_act.svg'
set grid
set key below
set title 'sink_search_long'
set xlabel 'layer'
set xtics 1
set logscale y
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set ytics ("50" 50, "100" 100, "200" 200, "500" 500)
set ylabel 'M-Act (max |h| of the layer output, log scale)'
plot 'sink_search_long-m_act.dat' index 0 using 1:2 with linespoints lc rgb '#0072b2' dt 1 pt 1 title 'base-6M', \
     'sink_search_long-m_act.dat' index 1 using 1:2 with linespoints lc rgb '#d55e00' dt 1 pt 2 title 'lr-1e-2-6M'
set terminal pngcairo size 960,560 noenhanced
set output 'sink_search_long-m_act.png'
replot
set output
