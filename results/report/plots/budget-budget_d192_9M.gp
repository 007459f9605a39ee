# final val loss of each row minus the baseline's, against tokens per run
# written by `gated report`; run `gnuplot budget-budget_d192_9M.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'budget-budget_d192_9M.svg'
set grid
set key below
set title 'budget_d192_9M ... budget_d192_18M: row - baseline at each budget'
set logscale x
set xrange [6007466.667:27033600]
set yrange [-0.03793235999:0.004947699129]
set xlabel 'tokens per run (log scale)'
set ylabel 'final val loss - baseline (nats/byte), seed-pair mean'
set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#000000' dt 2
set xtics ('9.01M' 9011200, '18M' 18022400)
plot 'budget-budget_d192_9M.dat' index 0 using 1:2:3:4 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'G1-elementwise', \
     'budget-budget_d192_9M.dat' index 1 using 1:2:3:4 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'G1-tanh', \
     'budget-budget_d192_9M.dat' index 2 using 1:2:3:4 with yerrorlines lc rgb '#009e73' dt 1 pt 3 title 'G5'
set terminal pngcairo size 960,560 noenhanced
set output 'budget-budget_d192_9M.png'
replot
set output
