# M-Act per layer
# written by `gated report`; run `gnuplot t512_mla-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 't512_mla-m_act.svg'
set grid
set key below
set title 't512_mla'
set xlabel 'layer'
set xtics 1
set logscale y
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set ytics ("50" 50, "100" 100, "150" 150)
set ylabel 'M-Act (max |h| of the layer output, log scale) (bars: +- std)'
plot 't512_mla-m_act.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'MHA', \
     't512_mla-m_act.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'MLA', \
     't512_mla-m_act.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'MLA-G1', \
     't512_mla-m_act.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 1 pt 4 title 'MQA', \
     't512_mla-m_act.dat' index 4 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 1 pt 5 title 'MLA-noR', \
     't512_mla-m_act.dat' index 5 using 1:2:3 with yerrorlines lc rgb '#56b4e9' dt 1 pt 6 title 'MLA-G1-headwise', \
     't512_mla-m_act.dat' index 6 using 1:2:3 with yerrorlines lc rgb '#000000' dt 1 pt 7 title 'MHA-G1'
set terminal pngcairo size 960,560 noenhanced
set output 't512_mla-m_act.png'
replot
set output
