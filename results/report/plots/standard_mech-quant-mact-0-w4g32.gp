# each run's PPL increase under a quantization scheme against its M-Act
# written by `gated report`; run `gnuplot standard_mech-quant-mact-0-w4g32.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'standard_mech-quant-mact-0-w4g32.svg'
set grid
set key below
set title 'standard_mech: w4g32 (Pearson r = +0.251, Spearman rho = +0.292, n = 21)'
set xlabel 'M-Act (max |h| of a layer output, last evaluation)'
set ylabel 'PPL - float PPL under w4g32 (% of float PPL)'
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05
set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2
plot 'standard_mech-quant-mact-0-w4g32.dat' index 0 using 1:2 with points ps 1.5 lw 2 lc rgb '#0072b2' dt 1 pt 1 title 'G1-elementwise', \
     'standard_mech-quant-mact-0-w4g32.dat' index 1 using 1:2 with points ps 1.5 lw 2 lc rgb '#d55e00' dt 1 pt 2 title 'baseline', \
     'standard_mech-quant-mact-0-w4g32.dat' index 2 using 1:2 with points ps 1.5 lw 2 lc rgb '#009e73' dt 1 pt 3 title 'G1-input-independent', \
     'standard_mech-quant-mact-0-w4g32.dat' index 3 using 1:2 with points ps 1.5 lw 2 lc rgb '#cc79a7' dt 1 pt 4 title 'G1-ns-sigmoid', \
     'standard_mech-quant-mact-0-w4g32.dat' index 4 using 1:2 with points ps 1.5 lw 2 lc rgb '#e69f00' dt 1 pt 5 title 'G1-silu-only'
set terminal pngcairo size 960,560 noenhanced
set output 'standard_mech-quant-mact-0-w4g32.png'
replot
set output
