# M-Act per layer
# written by `gated report`; run `gnuplot t512_topk-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 't512_topk-m_act.svg'
set grid
set key below
set title 't512_topk'
set xlabel 'layer'
set xtics 1
set logscale y
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set ytics ("40" 40, "60" 60, "80" 80, "100" 100, "120" 120)
set ylabel 'M-Act (max |h| of the layer output, log scale) (bars: +- std)'
plot 't512_topk-m_act.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'dense', \
     't512_topk-m_act.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'dense-G1', \
     't512_topk-m_act.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'topk64', \
     't512_topk-m_act.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 1 pt 4 title 'topk64-G1', \
     't512_topk-m_act.dat' index 4 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 1 pt 5 title 'topk32', \
     't512_topk-m_act.dat' index 5 using 1:2:3 with yerrorlines lc rgb '#56b4e9' dt 1 pt 6 title 'topk32-G1', \
     't512_topk-m_act.dat' index 6 using 1:2:3 with yerrorlines lc rgb '#000000' dt 1 pt 7 title 'topk64-G1-headwise', \
     't512_topk-m_act.dat' index 7 using 1:2:3 with yerrorlines lc rgb '#999999' dt 1 pt 8 title 'window64', \
     't512_topk-m_act.dat' index 8 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 2 pt 9 title 'random64', \
     't512_topk-m_act.dat' index 9 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 2 pt 10 title 'oracle64'
set terminal pngcairo size 960,560 noenhanced
set output 't512_topk-m_act.png'
replot
set output
