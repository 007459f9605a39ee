# gate-score histogram per layer, last step, counts summed over seeds
# written by `gated report`; run `gnuplot standard_remedies-gate-7-G1-sink_logit.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'standard_remedies-gate-7-G1-sink_logit.svg'
set grid
set key below
set title 'standard_remedies: gate scores of G1-sink_logit (last step, 6 runs summed)'
set xlabel 'gate score'
set ylabel 'fraction of scores'
set xrange [0:1]
plot 'standard_remedies-gate-7-G1-sink_logit.dat' index 0 using 1:2 with histeps lw 2 lc rgb '#0072b2' dt 1 title 'layer 0', \
     'standard_remedies-gate-7-G1-sink_logit.dat' index 1 using 1:2 with histeps lw 2 lc rgb '#d55e00' dt 1 title 'layer 1', \
     'standard_remedies-gate-7-G1-sink_logit.dat' index 2 using 1:2 with histeps lw 2 lc rgb '#009e73' dt 1 title 'layer 2', \
     'standard_remedies-gate-7-G1-sink_logit.dat' index 3 using 1:2 with histeps lw 2 lc rgb '#cc79a7' dt 1 title 'layer 3'
set terminal pngcairo size 960,560 noenhanced
set output 'standard_remedies-gate-7-G1-sink_logit.png'
replot
set output
