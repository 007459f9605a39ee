# F-Attn per layer
# written by `gated report`; run `gnuplot bb_search-f_attn.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'bb_search-f_attn.svg'
set grid
set key below
set title 'bb_search'
set xlabel 'layer'
set xtics 1
set ylabel 'F-Attn (attention on position 0) (bars: +- std)'
plot 'bb_search-f_attn.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'd128-T128-B64-lr1e-3', \
     'bb_search-f_attn.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'd64-T64-B32-lr1e-3', \
     'bb_search-f_attn.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'd128-T128-B64-lr1e-3-first=non_trigger', \
     'bb_search-f_attn.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 1 pt 4 title 'd64-T64-B32-lr1e-3-first=non_trigger', \
     'bb_search-f_attn.dat' index 4 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 1 pt 5 title 'd64-T128-B32-lr1e-3-first=non_trigger', \
     'bb_search-f_attn.dat' index 5 using 1:2:3 with yerrorlines lc rgb '#56b4e9' dt 1 pt 6 title 'd128-T64-B32-lr3e-4-first=non_trigger'
set terminal pngcairo size 960,560 noenhanced
set output 'bb_search-f_attn.png'
replot
set output
