# final val loss of each row minus the baseline's, against tokens per run
# written by `gated report`; run `gnuplot budget-budget_0.5M.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'budget-budget_0.5M.svg'
set grid
set key below
set title 'budget_0.5M ... budget_16M: row - baseline at each budget'
set logscale x
set xrange [341333.3333:24576000]
set yrange [-0.1764140522:0.02301052855]
set xlabel 'tokens per run (log scale)'
set ylabel 'final val loss - baseline (nats/byte), seed-pair mean'
set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2
set xtics ('512k' 512000, '1.02M' 1024000, '2.05M' 2048000, '4.1M' 4096000, '8.19M' 8192000, '16.4M' 16384000)
plot 'budget-budget_0.5M.dat' index 0 using 1:2:3:4 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'G1-elementwise', \
     'budget-budget_0.5M.dat' index 1 using 1:2:3:4 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'G1-silu-only', \
     'budget-budget_0.5M.dat' index 2 using 1:2:3:4 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'scale-0.5', \
     'budget-budget_0.5M.dat' index 3 using 1:2:3:4 with yerrorlines lc rgb '#cc79a7' dt 1 pt 4 title 'G1-open', \
     'budget-budget_0.5M.dat' index 4 using 1:2:3:4 with yerrorlines lc rgb '#e69f00' dt 1 pt 5 title 'G5', \
     'budget-budget_0.5M.dat' index 5 using 1:2:3:4 with yerrorlines lc rgb '#56b4e9' dt 1 pt 6 title 'G1-tanh', \
     'budget-budget_0.5M.dat' index 6 using 1:2:3:4 with yerrorlines lc rgb '#000000' dt 1 pt 7 title 'G1-silu'
set terminal pngcairo size 960,560 noenhanced
set output 'budget-budget_0.5M.png'
replot
set output
