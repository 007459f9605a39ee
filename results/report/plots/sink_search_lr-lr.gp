# final validation loss against peak learning rate; diverged runs as crosses
# written by `gated report`; run `gnuplot sink_search_lr-lr.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink_search_lr-lr.svg'
set grid
set key below
set title 'sink_search_lr'
set logscale x
set autoscale xfix
set format x '%g'
set xlabel 'train.lr (log scale)'
set ylabel 'final validation loss, mean +- std over seeds'
set yrange [1.89616309:2.025339611]
set offsets graph 0.05, graph 0.05, 0, 0
set xtics ("0.02" 0.02, "0.03" 0.03)
plot 'sink_search_lr-lr.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'lr-2e-2 / lr-3e-2'
set terminal pngcairo size 960,560 noenhanced
set output 'sink_search_lr-lr.png'
replot
set output
