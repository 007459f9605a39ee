# PPL increase under each quantization scheme, % of the float PPL, mean +- std over seeds
# written by `gated report`; run `gnuplot sink-quant.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink-quant.svg'
set grid
set key below
set title 'sink'
set xlabel 'quantization scheme'
set ylabel 'PPL - float PPL (% of float PPL), mean +- std over seeds'
set xrange [-0.5:2.5]
set offsets 0, 0, graph 0.05, graph 0.05
set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2
set xtics ('w4g32' 0, 'w8-a8tensor' 1, 'w8-a8token' 2)
plot 'sink-quant.dat' index 0 using 1:2:3 with yerrorbars ps 1.5 lw 2 lc rgb '#0072b2' dt 1 pt 1 title 'baseline', \
     'sink-quant.dat' index 1 using 1:2:3 with yerrorbars ps 1.5 lw 2 lc rgb '#d55e00' dt 1 pt 2 title 'G1-elementwise', \
     'sink-quant.dat' index 2 using 1:2:3 with yerrorbars ps 1.5 lw 2 lc rgb '#009e73' dt 1 pt 3 title 'G1-headwise', \
     'sink-quant.dat' index 3 using 1:2:3 with yerrorbars ps 1.5 lw 2 lc rgb '#cc79a7' dt 1 pt 4 title 'G1-head-shared', \
     'sink-quant.dat' index 4 using 1:2:3 with yerrorbars ps 1.5 lw 2 lc rgb '#e69f00' dt 1 pt 5 title 'G1-input-independent', \
     'sink-quant.dat' index 5 using 1:2:3 with yerrorbars ps 1.5 lw 2 lc rgb '#56b4e9' dt 1 pt 6 title 'G1-ns-sigmoid', \
     'sink-quant.dat' index 6 using 1:2:3 with yerrorbars ps 1.5 lw 2 lc rgb '#000000' dt 1 pt 7 title 'G2-elementwise', \
     'sink-quant.dat' index 7 using 1:2:3 with yerrorbars ps 1.5 lw 2 lc rgb '#999999' dt 1 pt 8 title 'G1-silu-only'
set terminal pngcairo size 960,560 noenhanced
set output 'sink-quant.png'
replot
set output
