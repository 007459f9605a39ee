# M-Act per layer
# written by `gated report`; run `gnuplot bb_sink_3l-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'bb_sink_3l-m_act.svg'
set grid
set key below
set title 'bb_sink_3l'
set xlabel 'layer'
set xtics 1
set logscale y
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set ytics ("1.5" 1.5, "2" 2, "2.5" 2.5)
set ylabel 'M-Act (max |h| of the layer output, log scale) (bars: +- std)'
plot 'bb_sink_3l-m_act.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'baseline', \
     'bb_sink_3l-m_act.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'G1-elementwise', \
     'bb_sink_3l-m_act.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'G1-headwise', \
     'bb_sink_3l-m_act.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 1 pt 4 title 'G1-input-independent', \
     'bb_sink_3l-m_act.dat' index 4 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 1 pt 5 title 'G1-ns-sigmoid', \
     'bb_sink_3l-m_act.dat' index 5 using 1:2:3 with yerrorlines lc rgb '#56b4e9' dt 1 pt 6 title 'G1-silu-only'
set terminal pngcairo size 960,560 noenhanced
set output 'bb_sink_3l-m_act.png'
replot
set output
