# validation PPL against the share of (token, head) pairs dropped, mean +- std over seeds
# written by `gated report`; run `gnuplot sink_search_lr-drop.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink_search_lr-drop.svg'
set grid
set key below
set title 'sink_search_lr'
set logscale y
set format y '%g'
set autoscale yfix
set offsets 0, 0, graph 0.05, graph 0.05
set xrange [-2:*]
set xlabel '(token, head) pairs dropped (%)'
set ylabel 'validation PPL (log scale), mean +- std over seeds'
set ytics ("10" 10, "20" 20, "30" 30, "40" 40)
plot 'sink_search_lr-drop.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 4 pt 4 title 'lr-2e-2: random (fixed F)', \
     'sink_search_lr-drop.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 5 pt 5 title 'lr-2e-2: entropy (fixed F)'
set terminal pngcairo size 960,560 noenhanced
set output 'sink_search_lr-drop.png'
replot
set output
