# F-Attn per layer
# written by `gated report`; run `gnuplot standard-f_attn.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'standard-f_attn.svg'
set grid
set key below
set title 'standard'
set xlabel 'layer'
set xtics 1
set ylabel 'F-Attn (attention on position 0) (bars: +- std)'
plot 'standard-f_attn.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'baseline', \
     'standard-f_attn.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'G1-elementwise', \
     'standard-f_attn.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'G1-headwise', \
     'standard-f_attn.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 1 pt 4 title 'G1-head-shared', \
     'standard-f_attn.dat' index 4 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 1 pt 5 title 'G2-elementwise', \
     'standard-f_attn.dat' index 5 using 1:2:3 with yerrorlines lc rgb '#56b4e9' dt 1 pt 6 title 'G3-elementwise', \
     'standard-f_attn.dat' index 6 using 1:2:3 with yerrorlines lc rgb '#000000' dt 1 pt 7 title 'G5', \
     'standard-f_attn.dat' index 7 using 1:2:3 with yerrorlines lc rgb '#999999' dt 1 pt 8 title 'G1-silu-only', \
     'standard-f_attn.dat' index 8 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 2 pt 9 title 'G1-rmsnorm-control', \
     'standard-f_attn.dat' index 9 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 2 pt 10 title 'scale-0.5', \
     'standard-f_attn.dat' index 10 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 2 pt 11 title 'G1-open', \
     'standard-f_attn.dat' index 11 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 2 pt 12 title 'G1-input-independent', \
     'standard-f_attn.dat' index 12 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 2 pt 13 title 'G1-ns-sigmoid', \
     'standard-f_attn.dat' index 13 using 1:2:3 with yerrorlines lc rgb '#56b4e9' dt 2 pt 1 title 'G1-tanh', \
     'standard-f_attn.dat' index 14 using 1:2:3 with yerrorlines lc rgb '#000000' dt 2 pt 2 title 'G1-silu'
set terminal pngcairo size 960,560 noenhanced
set output 'standard-f_attn.png'
replot
set output
