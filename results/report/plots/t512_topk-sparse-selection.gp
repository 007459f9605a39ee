# the selection's recall of the dense attention mass and P(position 0 selected) against step, mean +- std over seeds
# written by `gated report`; run `gnuplot t512_topk-sparse-selection.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 't512_topk-sparse-selection.svg'
set grid
set key below
set title 't512_topk'
set xlabel 'step'
set yrange [0:1]
set ylabel 'recall (solid), P(0 in S) (dashed)'
plot 't512_topk-sparse-selection.dat' index 0 using 1:2 with linespoints lc rgb '#009e73' dt 1 pt 3 title 'topk64 (recall)', \
     't512_topk-sparse-selection.dat' index 1 using 1:2 with linespoints lc rgb '#009e73' dt 2 pt 3 title 'topk64 (P(0 in S))', \
     't512_topk-sparse-selection.dat' index 2 using 1:2 with linespoints lc rgb '#cc79a7' dt 1 pt 4 title 'topk64-G1 (recall)', \
     't512_topk-sparse-selection.dat' index 3 using 1:2 with linespoints lc rgb '#cc79a7' dt 2 pt 4 title 'topk64-G1 (P(0 in S))', \
     't512_topk-sparse-selection.dat' index 4 using 1:2 with linespoints lc rgb '#e69f00' dt 1 pt 5 title 'topk32 (recall)', \
     't512_topk-sparse-selection.dat' index 5 using 1:2 with linespoints lc rgb '#e69f00' dt 2 pt 5 title 'topk32 (P(0 in S))', \
     't512_topk-sparse-selection.dat' index 6 using 1:2 with linespoints lc rgb '#56b4e9' dt 1 pt 6 title 'topk32-G1 (recall)', \
     't512_topk-sparse-selection.dat' index 7 using 1:2 with linespoints lc rgb '#56b4e9' dt 2 pt 6 title 'topk32-G1 (P(0 in S))', \
     't512_topk-sparse-selection.dat' index 8 using 1:2 with linespoints lc rgb '#000000' dt 1 pt 7 title 'topk64-G1-headwise (recall)', \
     't512_topk-sparse-selection.dat' index 9 using 1:2 with linespoints lc rgb '#000000' dt 2 pt 7 title 'topk64-G1-headwise (P(0 in S))', \
     't512_topk-sparse-selection.dat' index 10 using 1:2 with linespoints lc rgb '#999999' dt 1 pt 8 title 'window64 (recall)', \
     't512_topk-sparse-selection.dat' index 11 using 1:2 with linespoints lc rgb '#999999' dt 2 pt 8 title 'window64 (P(0 in S))', \
     't512_topk-sparse-selection.dat' index 12 using 1:2 with linespoints lc rgb '#0072b2' dt 1 pt 9 title 'random64 (recall)', \
     't512_topk-sparse-selection.dat' index 13 using 1:2 with linespoints lc rgb '#0072b2' dt 2 pt 9 title 'random64 (P(0 in S))', \
     't512_topk-sparse-selection.dat' index 14 using 1:2 with linespoints lc rgb '#d55e00' dt 1 pt 10 title 'oracle64 (recall)', \
     't512_topk-sparse-selection.dat' index 15 using 1:2 with linespoints lc rgb '#d55e00' dt 2 pt 10 title 'oracle64 (P(0 in S))'
set terminal pngcairo size 960,560 noenhanced
set output 't512_topk-sparse-selection.png'
replot
set output
