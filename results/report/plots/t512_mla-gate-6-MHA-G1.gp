# gate-score histogram per layer, last step, counts summed over seeds
# written by `gated report`; run `gnuplot t512_mla-gate-6-MHA-G1.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 't512_mla-gate-6-MHA-G1.svg'
set grid
set key below
set title 't512_mla: gate scores of MHA-G1 (last step, 6 runs summed)'
set xlabel 'gate score'
set ylabel 'fraction of scores'
set xrange [0:1]
plot 't512_mla-gate-6-MHA-G1.dat' index 0 using 1:2 with histeps lw 2 lc rgb '#0072b2' dt 1 title 'layer 0', \
     't512_mla-gate-6-MHA-G1.dat' index 1 using 1:2 with histeps lw 2 lc rgb '#d55e00' dt 1 title 'layer 1', \
     't512_mla-gate-6-MHA-G1.dat' index 2 using 1:2 with histeps lw 2 lc rgb '#009e73' dt 1 title 'layer 2', \
     't512_mla-gate-6-MHA-G1.dat' index 3 using 1:2 with histeps lw 2 lc rgb '#cc79a7' dt 1 title 'layer 3'
set terminal pngcairo size 960,560 noenhanced
set output 't512_mla-gate-6-MHA-G1.png'
replot
set output
