# val loss - train loss against tokens seen, seed mean, the longest budget's runs
# written by `gated report`; run `gnuplot budget-budget_0.5M-gap.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'budget-budget_0.5M-gap.svg'
set grid
set key below
set title 'budget_16M: val loss - train loss (mean since the previous evaluation)'
set format x '%.0s%c'
set xlabel 'tokens seen'
set ylabel 'val loss - train loss (nats), seed mean'
set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2
plot 'budget-budget_0.5M-gap.dat' index 0 using 1:2 with linespoints lc rgb '#0072b2' dt 1 pt 1 title 'baseline', \
     'budget-budget_0.5M-gap.dat' index 1 using 1:2 with linespoints lc rgb '#d55e00' dt 1 pt 2 title 'G1-elementwise', \
     'budget-budget_0.5M-gap.dat' index 2 using 1:2 with linespoints lc rgb '#009e73' dt 1 pt 3 title 'G1-silu-only', \
     'budget-budget_0.5M-gap.dat' index 3 using 1:2 with linespoints lc rgb '#cc79a7' dt 1 pt 4 title 'scale-0.5', \
     'budget-budget_0.5M-gap.dat' index 4 using 1:2 with linespoints lc rgb '#e69f00' dt 1 pt 5 title 'G5', \
     'budget-budget_0.5M-gap.dat' index 5 using 1:2 with linespoints lc rgb '#56b4e9' dt 1 pt 6 title 'G1-tanh', \
     'budget-budget_0.5M-gap.dat' index 6 using 1:2 with linespoints lc rgb '#000000' dt 1 pt 7 title 'G1-silu'
set terminal pngcairo size 960,560 noenhanced
set output 'budget-budget_0.5M-gap.png'
replot
set output
