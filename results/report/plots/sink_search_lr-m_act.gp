# M-Act per layer
# written by `gated report`; run `gnuplot sink_search_lr-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink_search_lr-m_act.svg'
set grid
set key below
set title 'sink_search_lr'
set xlabel 'layer'
set xtics 1
set logscale y
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set ytics ("1000" 1000, "2000" 2000, "5000" 5000)
set ylabel 'M-Act (max |h| of the layer output, log scale) (bars: +- std)'
plot 'sink_search_lr-m_act.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'lr-2e-2', \
     'sink_search_lr-m_act.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'lr-3e-2'
set terminal pngcairo size 960,560 noenhanced
set output 'sink_search_lr-m_act.png'
replot
set output
