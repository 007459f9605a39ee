# F-Attn per layer
# written by `gated report`; run `gnuplot long_context_continued-f_attn.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'long_context_continued-f_attn.svg'
set grid
set key below
set title 'long_context_continued'
set xlabel 'layer'
set xtics 1
set ylabel 'F-Attn (attention on position 0) (bars: +- std)'
plot 'long_context_continued-f_attn.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'baseline', \
     'long_context_continued-f_attn.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'G1-elementwise', \
     'long_context_continued-f_attn.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'G1-headwise'
set terminal pngcairo size 960,560 noenhanced
set output 'long_context_continued-f_attn.png'
replot
set output
