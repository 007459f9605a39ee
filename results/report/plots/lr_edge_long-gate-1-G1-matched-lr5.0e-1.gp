# gate-score histogram per layer, last step, counts summed over seeds
# written by `gated report`; run `gnuplot lr_edge_long-gate-1-G1-matched-lr5.0e-1.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'lr_edge_long-gate-1-G1-matched-lr5.0e-1.svg'
set grid
set key below
set title 'lr_edge_long: gate scores of G1-matched-lr5.0e-1 (last step, 12 runs summed)'
set xlabel 'gate score'
set ylabel 'fraction of scores'
set xrange [0:1]
plot 'lr_edge_long-gate-1-G1-matched-lr5.0e-1.dat' index 0 using 1:2 with histeps lw 2 lc rgb '#0072b2' dt 1 title 'layer 0', \
     'lr_edge_long-gate-1-G1-matched-lr5.0e-1.dat' index 1 using 1:2 with histeps lw 2 lc rgb '#d55e00' dt 1 title 'layer 1', \
     'lr_edge_long-gate-1-G1-matched-lr5.0e-1.dat' index 2 using 1:2 with histeps lw 2 lc rgb '#009e73' dt 1 title 'layer 2', \
     'lr_edge_long-gate-1-G1-matched-lr5.0e-1.dat' index 3 using 1:2 with histeps lw 2 lc rgb '#cc79a7' dt 1 title 'layer 3', \
     'lr_edge_long-gate-1-G1-matched-lr5.0e-1.dat' index 4 using 1:2 with histeps lw 2 lc rgb '#e69f00' dt 1 title 'layer 4', \
     'lr_edge_long-gate-1-G1-matched-lr5.0e-1.dat' index 5 using 1:2 with histeps lw 2 lc rgb '#56b4e9' dt 1 title 'layer 5', \
     'lr_edge_long-gate-1-G1-matched-lr5.0e-1.dat' index 6 using 1:2 with histeps lw 2 lc rgb '#000000' dt 1 title 'layer 6', \
     'lr_edge_long-gate-1-G1-matched-lr5.0e-1.dat' index 7 using 1:2 with histeps lw 2 lc rgb '#999999' dt 1 title 'layer 7'
set terminal pngcairo size 960,560 noenhanced
set output 'lr_edge_long-gate-1-G1-matched-lr5.0e-1.png'
replot
set output
