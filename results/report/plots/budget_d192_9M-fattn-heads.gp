# F-Attn per layer and query head, last step, mean over seeds; one panel per row
# written by `gated report`; run `gnuplot budget_d192_9M-fattn-heads.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'budget_d192_9M-fattn-heads.svg'
set grid
set key below
unset grid
unset key
set title 'budget_d192_9M' offset 0,1
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
set xtics add ('4' 4)
set xtics add ('5' 5)
set label 1 'baseline' at 2.5, graph 1.03 center
set xtics add ('0' 7)
set xtics add ('1' 8)
set xtics add ('2' 9)
set xtics add ('3' 10)
set xtics add ('4' 11)
set xtics add ('5' 12)
set label 2 'G1-elementwise' at 9.5, graph 1.03 center
set xtics add ('0' 14)
set xtics add ('1' 15)
set xtics add ('2' 16)
set xtics add ('3' 17)
set xtics add ('4' 18)
set xtics add ('5' 19)
set label 3 'G1-tanh' at 16.5, graph 1.03 center
set xtics add ('0' 21)
set xtics add ('1' 22)
set xtics add ('2' 23)
set xtics add ('3' 24)
set xtics add ('4' 25)
set xtics add ('5' 26)
set label 4 'G5' at 23.5, graph 1.03 center
set xrange [-0.5:26.5]
set yrange [-0.5:3.5]
plot 'budget_d192_9M-fattn-heads.dat' index 0 matrix using ($1+0):2:3 with image, \
     'budget_d192_9M-fattn-heads.dat' index 1 matrix using ($1+7):2:3 with image, \
     'budget_d192_9M-fattn-heads.dat' index 2 matrix using ($1+14):2:3 with image, \
     'budget_d192_9M-fattn-heads.dat' index 3 matrix using ($1+21):2:3 with image
set terminal pngcairo size 960,560 noenhanced
set output 'budget_d192_9M-fattn-heads.png'
replot
set output
