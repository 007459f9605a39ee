# gate-score histograms by query type (Bigram-Backcopy), per layer, last step, counts summed over seeds
# written by `gated report`; run `gnuplot bb_sink_3l-bb-gate-4-G1-ns-sigmoid.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'bb_sink_3l-bb-gate-4-G1-ns-sigmoid.svg'
set grid
set key below
set title 'bb_sink_3l: gate scores of G1-ns-sigmoid by query type (last step, 5 runs summed)'
set xlabel 'gate score'
set ylabel 'share of the layer''s scores of the type'
set xrange [0.5:1]
plot 'bb_sink_3l-bb-gate-4-G1-ns-sigmoid.dat' index 0 using 1:2 with histeps lw 2 lc rgb '#0072b2' dt 1 title 'layer 0, other', \
     'bb_sink_3l-bb-gate-4-G1-ns-sigmoid.dat' index 1 using 1:2 with histeps lw 2 lc rgb '#d55e00' dt 1 title 'layer 1, other', \
     'bb_sink_3l-bb-gate-4-G1-ns-sigmoid.dat' index 2 using 1:2 with histeps lw 2 lc rgb '#009e73' dt 1 title 'layer 2, other', \
     'bb_sink_3l-bb-gate-4-G1-ns-sigmoid.dat' index 3 using 1:2 with histeps lw 2 lc rgb '#0072b2' dt 2 title 'layer 0, trigger', \
     'bb_sink_3l-bb-gate-4-G1-ns-sigmoid.dat' index 4 using 1:2 with histeps lw 2 lc rgb '#d55e00' dt 2 title 'layer 1, trigger', \
     'bb_sink_3l-bb-gate-4-G1-ns-sigmoid.dat' index 5 using 1:2 with histeps lw 2 lc rgb '#009e73' dt 2 title 'layer 2, trigger'
set terminal pngcairo size 960,560 noenhanced
set output 'bb_sink_3l-bb-gate-4-G1-ns-sigmoid.png'
replot
set output
