# Attention on BOS from other queries per layer and query head, last step, mean over seeds; one panel per row
# written by `gated report`; run `gnuplot bb_remedies-fattn-heads.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'bb_remedies-fattn-heads.svg'
set grid
set key below
unset grid
unset key
set title 'bb_remedies' offset 0,2
set cbrange [0:1]
set cblabel 'share of attention on BOS (F-Attn; Bigram-Backcopy: from other queries)'
set palette defined (0 '#440154', 1 '#472d7b', 2 '#3b528b', 3 '#2c728e', 4 '#21918c', 5 '#28ae80', 6 '#5ec962', 7 '#addc30', 8 '#fde725')
set xlabel 'query head (one panel per row)'
set ylabel 'layer'
set ytics 1
set xtics () scale 0
set tmargin 5
set xtics add ('0' 0)
set label 1 'baseline' at 0, graph 1.03 center
set xtics add ('0' 2)
set label 2 'G1-elementwise' at 2, graph 1.08 center
set xtics add ('0' 4)
set label 3 'softmax1' at 4, graph 1.03 center
set xtics add ('0' 6)
set label 4 'sink_logit' at 6, graph 1.08 center
set xtics add ('0' 8)
set label 5 'kv_bias' at 8, graph 1.03 center
set xtics add ('0' 10)
set label 6 'sigmoid' at 10, graph 1.08 center
set xtics add ('0' 12)
set label 7 'softpick' at 12, graph 1.03 center
set xtics add ('0' 14)
set label 8 'G1-sink_logit' at 14, graph 1.08 center
set xrange [-0.5:14.5]
set yrange [-0.5:0.5]
plot 'bb_remedies-fattn-heads.dat' index 0 matrix using ($1+0):2:3 with image, \
     'bb_remedies-fattn-heads.dat' index 1 matrix using ($1+2):2:3 with image, \
     'bb_remedies-fattn-heads.dat' index 2 matrix using ($1+4):2:3 with image, \
     'bb_remedies-fattn-heads.dat' index 3 matrix using ($1+6):2:3 with image, \
     'bb_remedies-fattn-heads.dat' index 4 matrix using ($1+8):2:3 with image, \
     'bb_remedies-fattn-heads.dat' index 5 matrix using ($1+10):2:3 with image, \
     'bb_remedies-fattn-heads.dat' index 6 matrix using ($1+12):2:3 with image, \
     'bb_remedies-fattn-heads.dat' index 7 matrix using ($1+14):2:3 with image
set terminal pngcairo size 960,560 noenhanced
set output 'bb_remedies-fattn-heads.png'
replot
set output
