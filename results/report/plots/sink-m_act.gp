# M-Act per layer (last step, mean over seeds; log scale)
# written by `gated report`; run `gnuplot sink-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink-m_act.svg'
set grid
set key outside right top
set title 'sink'
set xlabel 'layer'
set xtics 1
set logscale y
set ylabel 'M-Act (max |h| of the layer output, log scale)'
plot 'sink-m_act.dat' index 0 using 1:2 with linespoints title 'baseline', \
     'sink-m_act.dat' index 1 using 1:2 with linespoints title 'G1-elementwise', \
     'sink-m_act.dat' index 2 using 1:2 with linespoints title 'G1-headwise', \
     'sink-m_act.dat' index 3 using 1:2 with linespoints title 'G1-head-shared', \
     'sink-m_act.dat' index 4 using 1:2 with linespoints title 'G1-input-independent', \
     'sink-m_act.dat' index 5 using 1:2 with linespoints title 'G1-ns-sigmoid', \
     'sink-m_act.dat' index 6 using 1:2 with linespoints title 'G2-elementwise'
set terminal pngcairo size 960,560 noenhanced
set output 'sink-m_act.png'
replot
set output
