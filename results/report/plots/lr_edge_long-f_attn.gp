# F-Attn per layer
# written by `gated report`; run `gnuplot lr_edge_long-f_attn.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'lr_edge_long-f_attn.svg'
set grid
set key below
set title 'lr_edge_long'
set xlabel 'layer'
set xtics 1
set ylabel 'F-Attn (attention on position 0) (bars: +- std)'
plot 'lr_edge_long-f_attn.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'baseline-lr5.0e-1', \
     'lr_edge_long-f_attn.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'G1-matched-lr5.0e-1'
set terminal pngcairo size 960,560 noenhanced
set output 'lr_edge_long-f_attn.png'
replot
set output
