# delta final val loss against training compute, a line per model size
# written by `gated report`; run `gnuplot budget-size-budget_0.5M-2.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'budget-size-budget_0.5M-2.svg'
set grid
set key below
set yrange [-0.1764140522:0.02301052855]
set title 'G1-tanh - baseline by model size'
set logscale x
set format x '%.0e'
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05
set xlabel 'training compute, 6 x params x tokens (FLOPs, log scale)'
set ylabel 'final val loss - baseline, seed-pair mean'
set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2
plot 'budget-size-budget_0.5M-2.dat' index 0 using 1:2:3:4 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title '759k params', \
     'budget-size-budget_0.5M-2.dat' index 1 using 1:2:3:4 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title '1.67M params'
set terminal pngcairo size 960,560 noenhanced
set output 'budget-size-budget_0.5M-2.png'
replot
set output
