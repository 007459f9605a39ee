# validation PPL against the share of (token, head) pairs dropped, mean +- std over seeds
# written by `gated report`; run `gnuplot standard-drop.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'standard-drop.svg'
set grid
set key below
set title 'standard'
set logscale y
set format y '%g'
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set xrange [-2:*]
set xlabel '(token, head) pairs dropped (%)'
set ylabel 'validation PPL (log scale), mean +- std over seeds'
set ytics ("5" 5, "10" 10, "15" 15, "20" 20, "25" 25)
plot 'standard-drop.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 4 pt 4 title 'baseline: random (fixed F)', \
     'standard-drop.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 5 pt 5 title 'baseline: entropy (fixed F)', \
     'standard-drop.dat' index 2 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 1 title 'G1-elementwise: gate', \
     'standard-drop.dat' index 3 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 2 pt 2 title 'G1-elementwise: random (matched)', \
     'standard-drop.dat' index 4 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 3 pt 3 title 'G1-elementwise: entropy (matched)', \
     'standard-drop.dat' index 5 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 4 pt 4 title 'G1-elementwise: random (fixed F)', \
     'standard-drop.dat' index 6 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 5 pt 5 title 'G1-elementwise: entropy (fixed F)', \
     'standard-drop.dat' index 7 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 1 pt 1 title 'G1-headwise: gate', \
     'standard-drop.dat' index 8 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 2 pt 2 title 'G1-headwise: random (matched)', \
     'standard-drop.dat' index 9 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 3 pt 3 title 'G1-headwise: entropy (matched)', \
     'standard-drop.dat' index 10 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 4 pt 4 title 'G1-headwise: random (fixed F)', \
     'standard-drop.dat' index 11 using 1:2:3 with yerrorlines lc rgb '#009e73' dt 5 pt 5 title 'G1-headwise: entropy (fixed F)', \
     'standard-drop.dat' index 12 using 1:2:3 with yerrorlines lc rgb '#999999' dt 4 pt 4 title 'G1-silu-only: random (fixed F)', \
     'standard-drop.dat' index 13 using 1:2:3 with yerrorlines lc rgb '#999999' dt 5 pt 5 title 'G1-silu-only: entropy (fixed F)', \
     'standard-drop.dat' index 14 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 1 pt 1 title 'G1-input-independent: gate', \
     'standard-drop.dat' index 15 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 2 pt 2 title 'G1-input-independent: random (matched)', \
     'standard-drop.dat' index 16 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 3 pt 3 title 'G1-input-independent: entropy (matched)', \
     'standard-drop.dat' index 17 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 4 pt 4 title 'G1-input-independent: random (fixed F)', \
     'standard-drop.dat' index 18 using 1:2:3 with yerrorlines lc rgb '#cc79a7' dt 5 pt 5 title 'G1-input-independent: entropy (fixed F)', \
     'standard-drop.dat' index 19 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 1 pt 1 title 'G1-ns-sigmoid: gate', \
     'standard-drop.dat' index 20 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 2 pt 2 title 'G1-ns-sigmoid: random (matched)', \
     'standard-drop.dat' index 21 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 3 pt 3 title 'G1-ns-sigmoid: entropy (matched)', \
     'standard-drop.dat' index 22 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 4 pt 4 title 'G1-ns-sigmoid: random (fixed F)', \
     'standard-drop.dat' index 23 using 1:2:3 with yerrorlines lc rgb '#e69f00' dt 5 pt 5 title 'G1-ns-sigmoid: entropy (fixed F)'
set terminal pngcairo size 960,560 noenhanced
set output 'standard-drop.png'
replot
set output
