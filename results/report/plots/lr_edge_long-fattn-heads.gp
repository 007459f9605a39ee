# F-Attn per layer and query head, last step, mean over seeds; one panel per row
# written by `gated report`; run `gnuplot lr_edge_long-fattn-heads.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'lr_edge_long-fattn-heads.svg'
set grid
set key below
unset grid
unset key
set title 'lr_edge_long' offset 0,1
set cbrange [0:1]
set cblabel 'F-Attn (share of attention on position 0)'
set palette defined (0 '#440154', 1 '#472d7b', 2 '#3b528b', 3 '#2c728e', 4 '#21918c', 5 '#28ae80', 6 '#5ec962', 7 '#addc30', 8 '#fde725')
set xlabel 'query head (one panel per row)'
set ylabel 'layer'
set ytics 1
set xtics () scale 0
set xtics add ('0' 0)
set xtics add ('1' 1)
set xtics add ('2' 2)
set xtics add ('3' 3)
set label 1 'baseline-lr5.0e-1' at 1.5, graph 1.03 center
set xtics add ('0' 5)
set xtics add ('1' 6)
set xtics add ('2' 7)
set xtics add ('3' 8)
set label 2 'G1-matched-lr5.0e-1' at 6.5, graph 1.03 center
set xrange [-0.5:8.5]
set yrange [-0.5:7.5]
plot 'lr_edge_long-fattn-heads.dat' index 0 matrix using ($1+0):2:3 with image, \
     'lr_edge_long-fattn-heads.dat' index 1 matrix using ($1+5):2:3 with image
set terminal pngcairo size 960,560 noenhanced
set output 'lr_edge_long-fattn-heads.png'
replot
set output
