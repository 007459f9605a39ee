# final validation loss against peak learning rate; diverged runs as crosses
# written by `gated report`; run `gnuplot lr_edge_warm-lr.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'lr_edge_warm-lr.svg'
set grid
set key below
set title 'lr_edge_warm'
set logscale x
set autoscale xfix
set format x '%g'
set xlabel 'train.lr (log scale)'
set ylabel 'final validation loss, mean +- std over seeds'
set yrange [2.159677745:2.836271615]
set offsets graph 0.05, graph 0.05, 0, 0
set xtics ("0.35" 0.35, "0.5" 0.5, "0.7" 0.7, "1" 1)
plot 'lr_edge_warm-lr.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'baseline', \
     'lr_edge_warm-lr.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'G1-matched', \
     'lr_edge_warm-lr.dat' index 2 using 1:2 with points pt 2 ps 2.5 lw 2 lc rgb 'red' title 'diverged'
set terminal pngcairo size 960,560 noenhanced
set output 'lr_edge_warm-lr.png'
replot
set output
