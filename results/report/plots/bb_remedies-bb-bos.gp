# attention on BOS of the BB head by query type against step, mean +- std over seeds
# written by `gated report`; run `gnuplot bb_remedies-bb-bos.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'bb_remedies-bb-bos.svg'
set grid
set key below
set title 'bb_remedies'
set xlabel 'step'
set yrange [0:1]
set ylabel 'attention on BOS (BB head)'
plot 'bb_remedies-bb-bos.dat' index 0 using 1:2 with linespoints lc rgb '#0072b2' dt 1 pt 1 title 'baseline (other queries)', \
     'bb_remedies-bb-bos.dat' index 1 using 1:2 with linespoints lc rgb '#0072b2' dt 2 pt 1 title 'baseline (trigger queries)', \
     'bb_remedies-bb-bos.dat' index 2 using 1:2 with linespoints lc rgb '#d55e00' dt 1 pt 2 title 'G1-elementwise (other queries)', \
     'bb_remedies-bb-bos.dat' index 3 using 1:2 with linespoints lc rgb '#d55e00' dt 2 pt 2 title 'G1-elementwise (trigger queries)', \
     'bb_remedies-bb-bos.dat' index 4 using 1:2 with linespoints lc rgb '#009e73' dt 1 pt 3 title 'softmax1 (other queries)', \
     'bb_remedies-bb-bos.dat' index 5 using 1:2 with linespoints lc rgb '#009e73' dt 2 pt 3 title 'softmax1 (trigger queries)', \
     'bb_remedies-bb-bos.dat' index 6 using 1:2 with linespoints lc rgb '#cc79a7' dt 1 pt 4 title 'sink_logit (other queries)', \
     'bb_remedies-bb-bos.dat' index 7 using 1:2 with linespoints lc rgb '#cc79a7' dt 2 pt 4 title 'sink_logit (trigger queries)', \
     'bb_remedies-bb-bos.dat' index 8 using 1:2 with linespoints lc rgb '#e69f00' dt 1 pt 5 title 'kv_bias (other queries)', \
     'bb_remedies-bb-bos.dat' index 9 using 1:2 with linespoints lc rgb '#e69f00' dt 2 pt 5 title 'kv_bias (trigger queries)', \
     'bb_remedies-bb-bos.dat' index 10 using 1:2 with linespoints lc rgb '#56b4e9' dt 1 pt 6 title 'sigmoid (other queries)', \
     'bb_remedies-bb-bos.dat' index 11 using 1:2 with linespoints lc rgb '#56b4e9' dt 2 pt 6 title 'sigmoid (trigger queries)', \
     'bb_remedies-bb-bos.dat' index 12 using 1:2 with linespoints lc rgb '#000000' dt 1 pt 7 title 'softpick (other queries)', \
     'bb_remedies-bb-bos.dat' index 13 using 1:2 with linespoints lc rgb '#000000' dt 2 pt 7 title 'softpick (trigger queries)', \
     'bb_remedies-bb-bos.dat' index 14 using 1:2 with linespoints lc rgb '#999999' dt 1 pt 8 title 'G1-sink_logit (other queries)', \
     'bb_remedies-bb-bos.dat' index 15 using 1:2 with linespoints lc rgb '#999999' dt 2 pt 8 title 'G1-sink_logit (trigger queries)'
set terminal pngcairo size 960,560 noenhanced
set output 'bb_remedies-bb-bos.png'
replot
set output
