# each run's PPL increase under a quantization scheme against its M-Act
# written by `gated report`; run `gnuplot standard-quant-mact-1-w8-a8tensor.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'standard-quant-mact-1-w8-a8tensor.svg'
set grid
set key below
set title 'standard: w8-a8tensor (Pearson r = -0.028, Spearman rho = +0.096, n = 18)'
set xlabel 'M-Act (max |h| of a layer output, last evaluation)'
set ylabel 'PPL - float PPL under w8-a8tensor (% of float PPL)'
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05
set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2
plot 'standard-quant-mact-1-w8-a8tensor.dat' index 0 using 1:2 with points ps 1.5 lw 2 lc rgb '#0072b2' dt 1 pt 1 title 'baseline', \
     'standard-quant-mact-1-w8-a8tensor.dat' index 1 using 1:2 with points ps 1.5 lw 2 lc rgb '#d55e00' dt 1 pt 2 title 'G1-elementwise', \
     'standard-quant-mact-1-w8-a8tensor.dat' index 2 using 1:2 with points ps 1.5 lw 2 lc rgb '#009e73' dt 1 pt 3 title 'G1-headwise', \
     'standard-quant-mact-1-w8-a8tensor.dat' index 3 using 1:2 with points ps 1.5 lw 2 lc rgb '#999999' dt 1 pt 8 title 'G1-silu-only', \
     'standard-quant-mact-1-w8-a8tensor.dat' index 4 using 1:2 with points ps 1.5 lw 2 lc rgb '#cc79a7' dt 2 pt 12 title 'G1-input-independent', \
     'standard-quant-mact-1-w8-a8tensor.dat' index 5 using 1:2 with points ps 1.5 lw 2 lc rgb '#e69f00' dt 2 pt 13 title 'G1-ns-sigmoid'
set terminal pngcairo size 960,560 noenhanced
set output 'standard-quant-mact-1-w8-a8tensor.png'
replot
set output
