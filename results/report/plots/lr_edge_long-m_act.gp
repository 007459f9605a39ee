# M-Act per layer
# written by `gated report`; run `gnuplot lr_edge_long-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'lr_edge_long-m_act.svg'
set grid
set key below
set title 'lr_edge_long'
set xlabel 'layer'
set xtics 1
set logscale y
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set ytics ("10000" 10000, "20000" 20000, "50000" 50000, "100000" 100000)
set ylabel 'M-Act (max |h| of the layer output, log scale) (bars: +- std)'
plot 'lr_edge_long-m_act.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'baseline-lr5.0e-1', \
     'lr_edge_long-m_act.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'G1-matched-lr5.0e-1'
set terminal pngcairo size 960,560 noenhanced
set output 'lr_edge_long-m_act.png'
replot
set output
