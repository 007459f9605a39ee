# gate-score histogram per layer, last step, counts summed over seeds
# written by `gated report`; run `gnuplot sink-gate-5-G1-ns-sigmoid.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'sink-gate-5-G1-ns-sigmoid.svg'
set grid
set key below
set title 'sink: gate scores of G1-ns-sigmoid (last step, 3 runs summed)'
set xlabel 'gate score'
set ylabel 'fraction of scores'
set xrange [0.5:1]
plot 'sink-gate-5-G1-ns-sigmoid.dat' index 0 using 1:2 with histeps lw 2 lc rgb '#0072b2' dt 1 title 'layer 0', \
     'sink-gate-5-G1-ns-sigmoid.dat' index 1 using 1:2 with histeps lw 2 lc rgb '#d55e00' dt 1 title 'layer 1', \
     'sink-gate-5-G1-ns-sigmoid.dat' index 2 using 1:2 with histeps lw 2 lc rgb '#009e73' dt 1 title 'layer 2', \
     'sink-gate-5-G1-ns-sigmoid.dat' index 3 using 1:2 with histeps lw 2 lc rgb '#cc79a7' dt 1 title 'layer 3'
set terminal pngcairo size 960,560 noenhanced
set output 'sink-gate-5-G1-ns-sigmoid.png'
replot
set output
