# F-Attn per layer
# written by `gated report`; run `gnuplot sink_search_long-f_attn.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink_search_long-f_attn.svg'
set grid
set key below
set title 'sink_search_long'
set xlabel 'layer'
set xtics 1
set ylabel 'F-Attn (attention on position 0)'
plot 'sink_search_long-f_attn.dat' index 0 using 1:2 with linespoints lc rgb '#0072b2' dt 1 pt 1 title 'base-6M', \
     'sink_search_long-f_attn.dat' index 1 using 1:2 with linespoints lc rgb '#d55e00' dt 1 pt 2 title 'lr-1e-2-6M'
set terminal pngcairo size 960,560 noenhanced
set output 'sink_search_long-f_attn.png'
replot
set output
