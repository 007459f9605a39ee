# validation PPL against the share of (token, head) pairs dropped, mean +- std over seeds
# written by `gated report`; run `gnuplot standard_remedies-drop.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'standard_remedies-drop.svg'
set grid
set key below
set title 'standard_remedies'
set logscale y
set format y '%g'
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set xrange [-2:*]
set xlabel '(token, head) pairs dropped (%)'
set ylabel 'validation PPL (log scale), mean +- std over seeds'
set ytics ("5" 5, "10" 10, "15" 15, "20" 20, "25" 25)
plot 'standard_remedies-drop.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 4 pt 4 title 'baseline: random (fixed F)', \
     'standard_remedies-drop.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 5 pt 5 title 'baseline: entropy (fixed F)', \
     'standard_remedies-drop.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 1 title 'G1-elementwise: gate', \
     'standard_remedies-drop.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 2 pt 2 title 'G1-elementwise: random (matched)', \
     'standard_remedies-drop.dat' index 4 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 3 pt 3 title 'G1-elementwise: entropy (matched)', \
     'standard_remedies-drop.dat' index 5 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 4 pt 4 title 'G1-elementwise: random (fixed F)', \
     'standard_remedies-drop.dat' index 6 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 5 pt 5 title 'G1-elementwise: entropy (fixed F)'
set terminal pngcairo size 960,560 noenhanced
set output 'standard_remedies-drop.png'
replot
set output
