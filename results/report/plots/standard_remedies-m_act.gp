# M-Act per layer
# written by `gated report`; run `gnuplot standard_remedies-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'standard_remedies-m_act.svg'
set grid
set key below
set title 'standard_remedies'
set xlabel 'layer'
set xtics 1
set logscale y
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set ytics ("30" 30, "40" 40, "50" 50, "60" 60, "70" 70)
set ylabel 'M-Act (max |h| of the layer output, log scale) (bars: +- std)'
plot 'standard_remedies-m_act.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'baseline', \
     'standard_remedies-m_act.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'G1-elementwise', \
     'standard_remedies-m_act.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'softmax1', \
     'standard_remedies-m_act.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 1 pt 4 title 'sink_logit', \
     'standard_remedies-m_act.dat' index 4 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 1 pt 5 title 'kv_bias', \
     'standard_remedies-m_act.dat' index 5 using 1:2:3 with yerrorlines lc rgb '#56b4e9' dt 1 pt 6 title 'sigmoid', \
     'standard_remedies-m_act.dat' index 6 using 1:2:3 with yerrorlines lc rgb '#000000' dt 1 pt 7 title 'softpick', \
     'standard_remedies-m_act.dat' index 7 using 1:2:3 with yerrorlines lc rgb '#999999' dt 1 pt 8 title 'G1-sink_logit'
set terminal pngcairo size 960,560 noenhanced
set output 'standard_remedies-m_act.png'
replot
set output
