# val loss - train loss against tokens seen, seed mean, the longest budget's runs
# written by `gated report`; run `gnuplot budget-budget_d192_9M-gap.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'budget-budget_d192_9M-gap.svg'
set grid
set key below
set title 'budget_d192_18M: val loss - train loss (mean since the previous evaluation)'
set format x '%.0s%c'
set xlabel 'tokens seen'
set ylabel 'val loss - train loss (nats), seed mean'
set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2
plot 'budget-budget_d192_9M-gap.dat' index 0 using 1:2 with linespoints lc rgb '#0072b2' dt 1 pt 1 title 'baseline', \
     'budget-budget_d192_9M-gap.dat' index 1 using 1:2 with linespoints lc rgb '#d55e00' dt 1 pt 2 title 'G1-elementwise'
set terminal pngcairo size 960,560 noenhanced
set output 'budget-budget_d192_9M-gap.png'
replot
set output
