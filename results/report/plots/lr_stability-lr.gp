# final validation loss against peak learning rate; diverged runs as crosses
# written by `gated report`; run `gnuplot lr_stability-lr.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'lr_stability-lr.svg'
set grid
set key below
set title 'lr_stability'
set logscale x
set autoscale xfix
set format x '%g'
set xlabel 'train.lr (log scale)'
set ylabel 'final validation loss, mean +- std over seeds'
set yrange [2.201214198:3.29734463]
set offsets graph 0.05, graph 0.05, 0, 0
set xtics ("0.003" 0.003, "0.01" 0.01, "0.03" 0.03)
plot 'lr_stability-lr.dat' index 0 using 1:2:3 with yerrorlines lc rgb '#0072b2' dt 1 pt 1 title 'baseline', \
     'lr_stability-lr.dat' index 1 using 1:2:3 with yerrorlines lc rgb '#d55e00' dt 1 pt 2 title 'G1-matched'
set terminal pngcairo size 960,560 noenhanced
set output 'lr_stability-lr.png'
replot
set output
