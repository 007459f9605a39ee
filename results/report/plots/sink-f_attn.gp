# F-Attn per layer (last step, mean over seeds)
# written by `gated report`; run `gnuplot sink-f_attn.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink-f_attn.svg'
set grid
set key outside right top
set title 'sink'
set xlabel 'layer'
set xtics 1
set ylabel 'F-Attn (attention on position 0)'
plot 'sink-f_attn.dat' index 0 using 1:2 with linespoints title 'baseline', \
     'sink-f_attn.dat' index 1 using 1:2 with linespoints title 'G1-elementwise', \
     'sink-f_attn.dat' index 2 using 1:2 with linespoints title 'G1-headwise', \
     'sink-f_attn.dat' index 3 using 1:2 with linespoints title 'G1-head-shared', \
     'sink-f_attn.dat' index 4 using 1:2 with linespoints title 'G1-input-independent', \
     'sink-f_attn.dat' index 5 using 1:2 with linespoints title 'G1-ns-sigmoid', \
     'sink-f_attn.dat' index 6 using 1:2 with linespoints title 'G2-elementwise'
set terminal pngcairo size 960,560 noenhanced
set output 'sink-f_attn.png'
replot
set output
