# gate-score histograms by query type (Bigram-Backcopy), per layer, last step, counts summed over seeds
# written by `gated report`; run `gnuplot bb_remedies-bb-gate-7-G1-sink_logit.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'bb_remedies-bb-gate-7-G1-sink_logit.svg'
set grid
set key below
set title 'bb_remedies: gate scores of G1-sink_logit by query type (last step, 15 runs summed)'
set xlabel 'gate score'
set ylabel 'share of the layer''s scores of the type'
set xrange [0:1]
plot 'bb_remedies-bb-gate-7-G1-sink_logit.dat' index 0 using 1:2 with histeps lw 2 lc rgb '#0072b2' dt 1 title 'layer 0, other', \
     'bb_remedies-bb-gate-7-G1-sink_logit.dat' index 1 using 1:2 with histeps lw 2 lc rgb '#0072b2' dt 2 title 'layer 0, trigger'
set terminal pngcairo size 960,560 noenhanced
set output 'bb_remedies-bb-gate-7-G1-sink_logit.png'
replot
set output
