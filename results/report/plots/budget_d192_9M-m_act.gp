# M-Act per layer
# written by `gated report`; run `gnuplot budget_d192_9M-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'budget_d192_9M-m_act.svg'
set grid
set key below
set title 'budget_d192_9M'
set xlabel 'layer'
set xtics 1
set logscale y
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set ytics ("50" 50, "100" 100, "200" 200)
set ylabel 'M-Act (max |h| of the layer output, log scale) (bars: +- std)'
plot 'budget_d192_9M-m_act.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'baseline', \
     'budget_d192_9M-m_act.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'G1-elementwise', \
     'budget_d192_9M-m_act.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'G1-tanh', \
     'budget_d192_9M-m_act.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 1 pt 4 title 'G5'
set terminal pngcairo size 960,560 noenhanced
set output 'budget_d192_9M-m_act.png'
replot
set output
