# M-Act per layer
# written by `gated report`; run `gnuplot long_context_continued-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'long_context_continued-m_act.svg'
set grid
set key below
set title 'long_context_continued'
set xlabel 'layer'
set xtics 1
set logscale y
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set ytics ("6" 6, "8" 8, "10" 10, "12" 12, "14" 14, "16" 16)
set ylabel 'M-Act (max |h| of the layer output, log scale) (bars: +- std)'
plot 'long_context_continued-m_act.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'baseline', \
     'long_context_continued-m_act.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'G1-elementwise', \
     'long_context_continued-m_act.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'G1-headwise'
set terminal pngcairo size 960,560 noenhanced
set output 'long_context_continued-m_act.png'
replot
set output
