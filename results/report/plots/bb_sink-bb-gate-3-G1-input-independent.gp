# gate-score histograms by query type (Bigram-Backcopy), per layer, last step, counts summed over seeds
# written by `gated report`; run `gnuplot bb_sink-bb-gate-3-G1-input-independent.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'bb_sink-bb-gate-3-G1-input-independent.svg'
set grid
set key below
set title 'bb_sink: gate scores of G1-input-independent by query type (last step, 15 runs summed)'
set xlabel 'gate score'
set ylabel 'share of the layer''s scores of the type'
set xrange [0.45:0.55]
plot 'bb_sink-bb-gate-3-G1-input-independent.dat' index 0 using 1:2 with histeps lw 2 lc rgb '#0072b2' dt 1 title 'layer 0, other', \
     'bb_sink-bb-gate-3-G1-input-independent.dat' index 1 using 1:2 with histeps lw 2 lc rgb '#0072b2' dt 2 title 'layer 0, trigger'
set terminal pngcairo size 960,560 noenhanced
set output 'bb_sink-bb-gate-3-G1-input-independent.png'
replot
set output
