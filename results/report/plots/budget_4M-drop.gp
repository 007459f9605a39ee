# validation PPL against the share of (token, head) pairs dropped, mean +- std over seeds
# written by `gated report`; run `gnuplot budget_4M-drop.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'budget_4M-drop.svg'
set grid
set key below
set title 'budget_4M'
set logscale y
set format y '%g'
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set xrange [-2:*]
set xlabel '(token, head) pairs dropped (%)'
set ylabel 'validation PPL (log scale), mean +- std over seeds'
set ytics ("6" 6, "8" 8, "10" 10, "12" 12, "14" 14, "16" 16, "18" 18)
plot 'budget_4M-drop.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 4 pt 4 title 'baseline: random (fixed F)', \
     'budget_4M-drop.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 5 pt 5 title 'baseline: entropy (fixed F)', \
     'budget_4M-drop.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 1 title 'G1-elementwise: gate', \
     'budget_4M-drop.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 2 pt 2 title 'G1-elementwise: random (matched)', \
     'budget_4M-drop.dat' index 4 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 3 pt 3 title 'G1-elementwise: entropy (matched)', \
     'budget_4M-drop.dat' index 5 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 4 pt 4 title 'G1-elementwise: random (fixed F)', \
     'budget_4M-drop.dat' index 6 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 5 pt 5 title 'G1-elementwise: entropy (fixed F)', \
     'budget_4M-drop.dat' index 7 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 4 pt 4 title 'G1-silu-only: random (fixed F)', \
     'budget_4M-drop.dat' index 8 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 5 pt 5 title 'G1-silu-only: entropy (fixed F)'
set terminal pngcairo size 960,560 noenhanced
set output 'budget_4M-drop.png'
replot
set output
