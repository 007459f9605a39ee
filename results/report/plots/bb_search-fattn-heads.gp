# Attention on BOS from other queries per layer and query head, last step, mean over seeds; one panel per row
# written by `gated report`; run `gnuplot bb_search-fattn-heads.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'bb_search-fattn-heads.svg'
set grid
set key below
unset grid
unset key
set title 'bb_search' offset 0,2
set cbrange [0:1]
set cblabel 'share of attention on BOS (F-Attn; Bigram-Backcopy: from other queries)'
set palette defined (0 '#440154', 1 '#472d7b', 2 '#3b528b', 3 '#2c728e', 4 '#21918c', 5 '#28ae80', 6 '#5ec962', 7 '#addc30', 8 '#fde725')
set xlabel 'query head (one panel per row)'
set ylabel 'layer'
set ytics 1
set xtics () scale 0
set tmargin 5
set xtics add ('0' 0)
set label 1 'd128-T128-B64-lr1e-3' at 0, graph 1.03 center
set xtics add ('0' 2)
set label 2 'd64-T64-B32-lr1e-3' at 2, graph 1.08 center
set xtics add ('0' 4)
set label 3 'd128-T128-B64-lr1e-3-first=non_trigger' at 4, graph 1.03 center
set xtics add ('0' 6)
set label 4 'd64-T64-B32-lr1e-3-first=non_trigger' at 6, graph 1.08 center
set xtics add ('0' 8)
set label 5 'd64-T128-B32-lr1e-3-first=non_trigger' at 8, graph 1.03 center
set xtics add ('0' 10)
set label 6 'd128-T64-B32-lr3e-4-first=non_trigger' at 10, graph 1.08 center
set xrange [-0.5:10.5]
set yrange [-0.5:0.5]
plot 'bb_search-fattn-heads.dat' index 0 matrix using ($1+0):2:3 with image, \
     'bb_search-fattn-heads.dat' index 1 matrix using ($1+2):2:3 with image, \
     'bb_search-fattn-heads.dat' index 2 matrix using ($1+4):2:3 with image, \
     'bb_search-fattn-heads.dat' index 3 matrix using ($1+6):2:3 with image, \
     'bb_search-fattn-heads.dat' index 4 matrix using ($1+8):2:3 with image, \
     'bb_search-fattn-heads.dat' index 5 matrix using ($1+10):2:3 with image
set terminal pngcairo size 960,560 noenhanced
set output 'bb_search-fattn-heads.png'
replot
set output
